import Foundation
import FuseKit
import NotesFS
import NotesModel
import NotesStore
import SQLiteKit

/// The world's kernel bookkeeping (a stored property of `SimWorld`).
struct SimKernelState {
    /// The kernel in front of each device's mount, made at the device's first kernel operation.
    var kernels: [Int: SimKernel] = [:]
    /// Tokens of saves a crash cut short: the local history may hold their only copy, by design.
    var crashCut = Set<Int>()
    /// Tokens of the save under way (added to `crashCut` when a crash cuts it).
    var savingTokens = Set<Int>()
    /// Draws for scenarios added after the world's stream was fixed, kept
    /// apart so that runs which never reach them replay as before.
    var scenarioRandom: SimRandom?
    /// Draws for `writeAtTheEndRightAfterASave`, apart from the others for the same reason.
    var afterSaveRandom: SimRandom?
    /// Draws for `savePlan` (a rewrite in place or an atomic save), apart for the same reason.
    var savePlanRandom: SimRandom?
    /// Draws for `asksSizeLate`, apart for the same reason.
    var lateSizeRandom: SimRandom?
}

// Programs writing through a simulated kernel (SimKernel) in front of each
// device's real NotesFileSystem: `>>`, a write at the end a program learned
// earlier, and a truncate-and-rewrite of text read earlier. Their
// descriptors stay open across steps, so pulls land between what a program
// learned and what it writes.
extension SimWorld {
    /// The kernel in front of `device`'s mount; a new one after the device
    /// crashed (the mount died with the process, every descriptor with it).
    func kernel(for device: SimDevice) -> SimKernel {
        if let kernel = kernelState.kernels[device.index], kernel.store === device.store { return kernel }
        kernelState.kernels[device.index]?.close()
        let kernel = SimKernel(world: self, device: device, opensSkipped: !configuration.kernelOpenRequests)
        kernelState.kernels[device.index] = kernel
        return kernel
    }

    /// Closes every kernel's mount (the run is over).
    func closeKernels() {
        for kernel in kernelState.kernels.values { kernel.close() }
        kernelState.kernels = [:]
    }

    /// At the start of each step: notifications reach the kernels, and
    /// programs whose time has come write.
    func kernelStep() throws {
        for device in devices {
            guard let kernel = kernelState.kernels[device.index] else { continue }
            guard kernel.store === device.store else {
                kernel.close()
                kernelState.kernels[device.index] = nil
                trace("\(device.name) kernel: the mount died with the process; its descriptors are gone")
                continue
            }
            kernel.deliverDueNotifications()
            for descriptor in kernel.dueDescriptors(by: step) {
                try finishKernelWrite(device, kernel, descriptor)
            }
        }
    }

    /// Before quiet: every program still holding a descriptor writes now.
    func finishKernelWrites() throws {
        for device in devices {
            guard let kernel = kernelState.kernels[device.index], kernel.store === device.store else { continue }
            kernel.deliverDueNotifications()
            for descriptor in kernel.dueDescriptors(by: Int.max) {
                try finishKernelWrite(device, kernel, descriptor)
            }
        }
    }

    /// A program opens a note through the kernel and learns what it will
    /// write against: now, or at a later step.
    func kernelOperation(_ device: SimDevice) async throws {
        operations += 1
        let kernel = kernel(for: device)
        kernel.deliverDueNotifications()
        let items = try tree(device.store)
        let notes = items.filter { if case .note = $0.ref { return true } else { return false } }
        guard let note = random.pick(notes), let path = Self.kernelPath(of: note, in: items) else { return }
        let delay = random.chance(0.3) ? 0 : random.int(1...6)
        let due = step + delay
        var opened: Int?
        do {
            switch random.weighted([2, 1.5, 1.5, 2.5]) ?? 0 {
            case 0:
                count(.kernelAppend)
                let descriptor = try kernel.open(
                    path, intended: note.ref, flags: OpenFlags(rawValue: O_WRONLY | O_APPEND), plan: .append, due: due)
                opened = descriptor
                trace("\(device.name) kernel: open \(path.joined(separator: "/")) O_APPEND, writes at step \(due)")
            case 1:
                count(.kernelLateWrite)
                try await readBeforeALineGoesElsewhere(device, kernel, path, note, probability: 0.5)
                let descriptor = try kernel.open(path, intended: note.ref, flags: OpenFlags(rawValue: O_WRONLY), plan: .append, due: due)
                opened = descriptor
                if let elsewhere = asksSizeLate() {
                    kernel.setPlan(descriptor, .writeAtEndAskedLate)
                    trace("\(device.name) kernel: open \(path.joined(separator: "/")), at step \(due) fstat and write there")
                    switch elsewhere {
                    case .removesALine: try await removeLineElsewhereAndPull(note.ref, into: device)
                    case .appends: try await appendElsewhereAndPull(note.ref, into: device)
                    case .nothing: break
                    }
                } else {
                    let end = try kernel.size(descriptor)
                    kernel.setPlan(descriptor, .writeAt(end))
                    trace("\(device.name) kernel: open \(path.joined(separator: "/")), fstat says \(end), writes there at step \(due)")
                }
            case 3:
                // The race of two machines writing one note: this one's
                // descriptor is open when another machine's line arrives.
                let name = path.joined(separator: "/")
                switch random.int(0...2) {
                case 0:
                    count(.kernelAppend)
                    opened = try kernel.open(
                        path, intended: note.ref, flags: OpenFlags(rawValue: O_WRONLY | O_APPEND), plan: .append,
                        due: step + 1)
                    trace("\(device.name) kernel: open \(name) O_APPEND while another machine appends")
                case 1:
                    count(.kernelLateWrite)
                    try await readBeforeALineGoesElsewhere(device, kernel, path, note, probability: 0.75)
                    let descriptor = try kernel.open(
                        path, intended: note.ref, flags: OpenFlags(rawValue: O_WRONLY), plan: .append, due: step + 1)
                    opened = descriptor
                    let end = try kernel.size(descriptor)
                    kernel.setPlan(descriptor, .writeAt(end))
                    trace("\(device.name) kernel: open \(name), fstat says \(end), while another machine appends")
                default:
                    count(.kernelRewrite)
                    let descriptor = try kernel.open(
                        path, intended: note.ref, flags: OpenFlags(rawValue: O_RDWR), plan: .append, due: step + 1)
                    opened = descriptor
                    let seen = try kernel.readAll(descriptor)
                    kernel.setPlan(descriptor, savePlan(seen))
                    trace("\(device.name) kernel: read \(name) {\(Self.tokenList(seen))} while another machine appends")
                }
                try await appendElsewhereAndPull(note.ref, into: device)
                return
            default:
                count(.kernelRewrite)
                let descriptor = try kernel.open(path, intended: note.ref, flags: OpenFlags(rawValue: O_RDWR), plan: .append, due: due)
                opened = descriptor
                let seen = try kernel.readAll(descriptor)
                kernel.setPlan(descriptor, savePlan(seen))
                trace("\(device.name) kernel: read \(path.joined(separator: "/")) {\(Self.tokenList(seen))}, saves it at step \(due)")
            }
        } catch {
            if let opened { kernel.close(opened) }
            kernelCallFailed(device, error)
            return
        }
        // A pull awaited above may have crashed the device: its mount, and
        // every descriptor on it, died with the process.
        if delay == 0, let opened, kernel.store === device.store { try finishKernelWrite(device, kernel, opened) }
    }

    /// Sometimes (drawn from the scenarios' own stream) another program
    /// reads the note, another device removes one of its lines, and the
    /// invalidation reaches this kernel: a program that `fstat`s next learns
    /// the shorter text while the reader holds the longer one. What the
    /// reader saw says nothing of where the next program's write belongs.
    private func readBeforeALineGoesElsewhere(
        _ device: SimDevice, _ kernel: SimKernel, _ path: [String], _ note: SimItem, probability: Double
    ) async throws {
        guard scenarioChance(probability) else { return }
        let reader = try kernel.open(path, intended: note.ref, flags: OpenFlags(rawValue: O_RDWR), plan: .append, due: step + 2)
        let seen = try kernel.closingOnError(reader) { try kernel.readAll(reader) }
        kernel.setPlan(reader, .rewrite(seen: seen))
        trace("\(device.name) kernel: read \(path.joined(separator: "/")) {\(Self.tokenList(seen))} before another machine removes a line")
        try await removeLineElsewhereAndPull(note.ref, into: device)
        kernel.deliverAllNotifications()
    }

    /// Sometimes (drawn from a stream of its own) another program opens the
    /// note a rewrite just saved, `fstat`s and writes a line at that end in
    /// the same instant. When the save was merged with a change its program
    /// had not seen, the size is the merged text's, and the line belongs at
    /// its end, not at that offset into the saving program's own text.
    private func writeAtTheEndRightAfterASave(_ device: SimDevice, _ kernel: SimKernel, _ saved: SimKernel.Descriptor)
        throws
    {
        var random = kernelState.afterSaveRandom ?? SimRandom(seed: seed ^ 0x4146_5445_5253_4156)
        defer { kernelState.afterSaveRandom = random }
        guard random.chance(0.6) else { return }
        let items = try tree(device.store)
        guard let note = items.first(where: { saved.refs.contains($0.ref) }),
            let path = Self.kernelPath(of: note, in: items)
        else { return }
        count(.kernelLateWrite)
        let descriptor = try kernel.open(path, intended: note.ref, flags: OpenFlags(rawValue: O_WRONLY), plan: .append, due: step)
        let end = try kernel.closingOnError(descriptor) { try kernel.size(descriptor) }
        kernel.setPlan(descriptor, .writeAt(end))
        trace("\(device.name) kernel: right after the save, open \(path.joined(separator: "/")), fstat says \(end), writes there")
        try finishKernelWrite(device, kernel, descriptor)
    }

    /// Whether a remembered-end program asks the size only when it writes,
    /// steps after its open (one time in three, four in five where the mount
    /// sees opens; from a stream of its own):
    /// pulls between its open and its `fstat` make the size it writes at
    /// newer than its open.
    /// When it does, what another machine does to the note meanwhile (pulled
    /// here before the program asks): a line removed, one appended, or nothing.
    private func asksSizeLate() -> ChangeElsewhere? {
        var random = kernelState.lateSizeRandom ?? SimRandom(seed: seed ^ 0x4C41_5445_5349_5A45)
        defer { kernelState.lateSizeRandom = random }
        // Most often where the mount sees opens: there the open's view is older than the size asked.
        guard random.chance(configuration.kernelOpenRequests ? 0.8 : 1.0 / 3) else { return nil }
        return [ChangeElsewhere.removesALine, .appends, .nothing][random.int(0...2)]
    }

    enum ChangeElsewhere {
        case removesALine
        case appends
        case nothing
    }

    /// How a program that read `seen` will save it: rewritten in place, or
    /// (one time in three, from a stream of its own) written to a temp file
    /// renamed over the note, as most editors save.
    private func savePlan(_ seen: Data) -> SimKernel.Plan {
        var random = kernelState.savePlanRandom ?? SimRandom(seed: seed ^ 0x5341_5645_504C_414E)
        defer { kernelState.savePlanRandom = random }
        return random.chance(1.0 / 3) ? .atomicSave(seen: seen) : .rewrite(seen: seen)
    }

    /// A draw from the scenarios' own stream (see `SimKernelState.scenarioRandom`).
    private func scenarioChance(_ probability: Double) -> Bool {
        var random = kernelState.scenarioRandom ?? SimRandom(seed: seed ^ 0x5343_454E_4152_494F)
        defer { kernelState.scenarioRandom = random }
        return random.chance(probability)
    }

    /// Another device holding `ref` removes one of its lines (the text
    /// shifts under what was read, not only past its end) and syncs, then
    /// `device` syncs. The line is the longest but the last: a write at the
    /// new end then falls inside the old text's last line, where a mount that
    /// splices it into the old text destroys that line.
    private func removeLineElsewhereAndPull(_ ref: EntryRef, into device: SimDevice) async throws {
        guard let other = random.pick(devices.filter { $0.index != device.index }),
            let note = try tree(other.store).first(where: { $0.ref == ref })
        else { return }
        let old = try other.store.admin.contents(of: ref)
        var lines = SimText.lines(old)
        guard !lines.isEmpty else { return }
        let longest = lines.dropLast().indices.max { lines[$0].utf8.count < lines[$1].utf8.count }
        lines.remove(at: longest ?? 0)
        try save(other, note, old: old, new: SimText.body(lines), appendOnly: false)
        try await sync(other)
        try await sync(device)
    }

    /// Another device holding `ref` appends a line through its kernel and
    /// syncs, then `device` syncs: the pulled line lands under an open descriptor.
    private func appendElsewhereAndPull(_ ref: EntryRef, into device: SimDevice) async throws {
        let others = devices.filter { $0.index != device.index }
        guard let other = random.pick(others) else { return }
        let items = try tree(other.store)
        guard let note = items.first(where: { $0.ref == ref }), let path = Self.kernelPath(of: note, in: items) else {
            return
        }
        let kernel = kernel(for: other)
        do {
            let descriptor = try kernel.open(
                path, intended: note.ref, flags: OpenFlags(rawValue: O_WRONLY | O_APPEND), plan: .append, due: step)
            try finishKernelWrite(other, kernel, descriptor)
        } catch {
            kernelCallFailed(other, error)
            return
        }
        try await sync(other)
        try await sync(device)
    }

    /// The program writes what it planned, then closes its descriptor.
    func finishKernelWrite(_ device: SimDevice, _ kernel: SimKernel, _ descriptor: Int) throws {
        guard var open = kernel.descriptors[descriptor] else { return }
        defer { kernel.close(descriptor) }
        if open.overtakenLocally {
            trace("\(device.name) kernel: another program changed \(open.name) first; this one gives up")
            return
        }
        if case .writeAtEndAskedLate = open.plan {
            // It asks the size now; from here it is a write at what it learned.
            do {
                let end = try kernel.size(descriptor)
                kernel.setPlan(descriptor, .writeAt(end))
                trace("\(device.name) kernel: \(open.name) fstat says \(end) now")
            } catch {
                kernelCallFailed(device, error)
                return
            }
            guard let asked = kernel.descriptors[descriptor] else { return }
            open = asked
        }
        if case .append = open.plan {
        } else if kernel.isInKnownGap(descriptor) {
            // docs/mount.md: with opens skipped, a descriptor whose note was
            // pulled and then stat'ed by another program writes as it is.
            trace("\(device.name) kernel: \(open.name) was pulled and stat'ed since its program learned it (known gap); no write")
            return
        }
        do {
            switch open.plan {
            case .append:
                let line = SimText.body(newLines(1))
                let offset = try kernel.write(descriptor, at: 0, bytes: line)
                wrote(line)
                trace("\(device.name) kernel: >> \(open.name) (inode \(open.inode)) sent at offset \(offset) {\(Self.tokenList(line))}")
            case .writeAt(let end):
                let line = SimText.body(newLines(1))
                try kernel.write(descriptor, at: end, bytes: line)
                wrote(line)
                trace("\(device.name) kernel: pwrite \(open.name) at \(end) {\(Self.tokenList(line))}")
            case .writeAtEndAskedLate:
                break  // turned into a write at the size it asked for, above
            case .atomicSave(let seen):
                try atomicSave(device, kernel, open, seen: seen)
            case .rewrite(let seen):
                let new = edited(seen)
                try kernel.truncate(descriptor, to: 0)
                do {
                    try kernel.write(descriptor, at: 0, bytes: new)
                } catch {
                    // Truncated by its own hand and never rewritten: what it saw is gone on purpose.
                    removedOnPurpose(seen)
                    throw error
                }
                wrote(new)
                removedOnPurpose(seen, keeping: new)
                trace("\(device.name) kernel: truncate and rewrite \(open.name): {\(Self.tokenList(seen))} -> {\(Self.tokenList(new))}")
                try writeAtTheEndRightAfterASave(device, kernel, open)
            }
        } catch {
            kernelCallFailed(device, error)
        }
    }

    /// What a program makes of the text it read: maybe a line removed,
    /// maybe one replaced, and one new line.
    private func edited(_ seen: Data) -> Data {
        var lines = SimText.lines(seen)
        if !lines.isEmpty, random.chance(0.5) { lines.remove(at: random.int(0...(lines.count - 1))) }
        if !lines.isEmpty, random.chance(0.4) { lines[random.int(0...(lines.count - 1))] = newLines(1)[0] }
        lines.insert(contentsOf: newLines(1), at: random.int(0...lines.count))
        return SimText.body(lines)
    }

    /// An editor's atomic save of what it read: the edited text into a new
    /// temp file beside the note, renamed over the note (at the path the
    /// store shows it under now, as an editor following the file would).
    private func atomicSave(_ device: SimDevice, _ kernel: SimKernel, _ open: SimKernel.Descriptor, seen: Data) throws {
        let items = try tree(device.store)
        guard let note = items.first(where: { open.refs.contains($0.ref) }), let path = Self.kernelPath(of: note, in: items),
            let name = path.last
        else {
            trace("\(device.name) kernel: \(open.name) is gone; its program does not save")
            return
        }
        let new = edited(seen)
        let temp = Array(path.dropLast()) + [".\(name).tmp\(step)"]
        let descriptor = try kernel.create(temp)
        try kernel.closingOnError(descriptor) { _ = try kernel.write(descriptor, at: 0, bytes: new) }
        kernel.close(descriptor)
        // From here its lines are in the temp file (a local-only file) at least.
        wrote(new)
        try kernel.rename(temp, to: path)
        removedOnPurpose(seen, keeping: new)
        trace("\(device.name) kernel: atomic save of \(path.joined(separator: "/")) through \(temp.last ?? ""): {\(Self.tokenList(seen))} -> {\(Self.tokenList(new))}")
        try writeAtTheEndRightAfterASave(device, kernel, open)
    }

    /// A failed system call is what a program sees as an error; a broken store is a violation.
    private func kernelCallFailed(_ device: SimDevice, _ error: Error) {
        if let error = error as? StoreError {
            switch error {
            case .database, .busy, .localFile, .diskFull, .newerSchema, .syncMismatch:
                violation("\(device.name): the store failed under the kernel: \(error)")
                return
            default: break
            }
        }
        trace("\(device.name) kernel: the call failed: \(error)")
    }

    /// The path of `note` from the root, by the names the store shows now.
    static func kernelPath(of note: SimItem, in items: [SimItem]) -> [String]? {
        var path = [note.name]
        var parent = note.parent
        while parent != .root {
            guard path.count < 64, let folder = items.first(where: { $0.ref.directory == parent }) else { return nil }
            path.insert(folder.name, at: 0)
            parent = folder.parent
        }
        return path
    }

    /// After quiet: every line written and not removed on purpose is in a
    /// live note (conflict copies included) on every device. Elsewhere only
    /// by design: a local-only file (a refused note's `(not synced)` copy,
    /// an editor's backup or temp file), or the local history for a save a
    /// crash cut short.
    func checkTextOnEveryDevice() throws {
        var inNotes: [Set<Int>] = []
        var localFiles = Set<Int>()
        var history = Set<Int>()
        for device in devices {
            var notes = Set<Int>()
            var zeroed = 0
            let reader = device.reader
            try reader.readTransaction {
                try reader.forEachRow("SELECT \(NotesStore.noteBodySQL(of: "n")) FROM notes n WHERE deleted = 0", arguments: []) { row in
                    let body = row.data(0)
                    notes.formUnion(SimText.tokens(body))
                    // No program here writes a NUL or past the end it knows:
                    // zeros are bytes spliced into a text of another length.
                    if body.contains(0) { zeroed += 1 }
                    return true
                }
                localFiles.formUnion(try device.localFileTokens())
                try reader.forEachRow("SELECT body FROM history", arguments: []) { row in
                    history.formUnion(SimText.tokens(row.data(0)))
                    return true
                }
            }
            inNotes.append(notes)
            if zeroed > 0 { violation("\(device.name): \(zeroed) notes hold NUL bytes (a write landed past the text it was meant for)") }
        }
        let expected = written.subtracting(removed).subtracting(localFiles)
        for (index, notes) in inNotes.enumerated() {
            let missing = expected.subtracting(notes).filter { !(kernelState.crashCut.contains($0) && history.contains($0)) }
            guard !missing.isEmpty else { continue }
            let inHistory = missing.filter { history.contains($0) }.count
            violation(
                "\(devices[index].name): \(missing.count) lines nobody removed are missing from its notes "
                    + "(\(inHistory) only in a local history), e.g. tokens \(missing.sorted().prefix(10))")
        }
    }
}
