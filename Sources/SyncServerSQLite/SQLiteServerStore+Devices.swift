import Foundation
import NotesModel
import SQLiteKit
import SyncServer

/// Device names (docs/server.md "Device names"): the latest name each device
/// told the server, per account, shown with the history's versions.
extension SQLiteServerStore {
    public func recordDeviceName(account: AccountID, device: DeviceID, name: String, at date: Date) async throws {
        try await write { connection in
            try connection.run(
                """
                INSERT INTO devices(account_id, device, name, named_at) VALUES (?, ?, ?, ?)
                ON CONFLICT(account_id, device) DO UPDATE SET name = excluded.name, named_at = excluded.named_at
                WHERE devices.name IS NOT excluded.name
                """, account.rawValue, device.description, name, Self.milliseconds(date))
        }
    }

    public func deviceNames(account: AccountID, devices: Set<DeviceID>) async throws -> [DeviceID: String] {
        guard !devices.isEmpty else { return [:] }
        let ids = devices.map(\.description)
        return try await read { connection in
            var names: [DeviceID: String] = [:]
            // Pages of versions name a few devices; the bound keeps one statement's variables few.
            for chunk in stride(from: 0, to: ids.count, by: 500).map({ ids[$0..<min($0 + 500, ids.count)] }) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
                let rows = try connection.query(
                    "SELECT device, name FROM devices WHERE account_id = ? AND device IN (\(marks))",
                    arguments: [account.rawValue] + chunk.map { $0 as any SQLBindable }
                ) { row in (DeviceID(row.string(0)), row.string(1)) }
                for (device, name) in rows { if let device { names[device] = name } }
            }
            return names
        }
    }
}
