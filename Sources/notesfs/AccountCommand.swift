import Foundation
import SyncServer

/// `notesfs account add|list|tokens|revoke`: accounts and tokens on the server machine.
struct AccountCommand: Command {
    static let name = "account"
    static let summary = "Add, list or revoke sync server accounts and their tokens"
    static let help = """
        Usage: notesfs account add <name> [--data DIR | --postgres CONNINFO]
               notesfs account list [--data DIR | --postgres CONNINFO]
               notesfs account tokens <name> [--data DIR | --postgres CONNINFO]
               notesfs account revoke <name> [--token ID] [--data DIR | --postgres CONNINFO]

        add      Makes the account (or adds a token to an existing one) and prints a
                 new token once. Only a hash of it is stored: keep it in a file that
                 only you can read and give it to 'notesfs mount --token-file'.
                 Adding to a revoked account reopens it with only the new token.
        list     Shows every account with its live tokens and live notes and folders.
        tokens   Lists the account's tokens: id (the part after nfs_ and before the
                 secret), when it was made, when a request last used it (to the
                 minute), and whether it is revoked.
        revoke   Revokes every token of the account at once; its notes are kept.
                 With --token ID, revokes only that token (rotate a token: add a
                 new one, switch your machines to it, revoke the old one).

        Works while 'notesfs serve' runs on the same data.

        Options:
          --data DIR   Server data directory (default: $XDG_DATA_HOME/notesfs/server,
                       or ~/.local/share/notesfs/server).
          --postgres CONNINFO  Use the PostgreSQL store of 'notesfs serve --postgres'.
        """
    static let spec = ArgumentSpec(
        options: ["--data", "--postgres", "--token"], positional: 1...2, actions: ["add", "list", "tokens", "revoke"])

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let action = arguments.positional[0]
        let name = arguments.positional.count > 1 ? arguments.positional[1] : nil
        if arguments.option("--token") != nil && action != "revoke" {
            throw CommandError.usage("--token goes with revoke")
        }
        switch action {
        case "tokens":
            guard let name else { throw CommandError.usage("account tokens needs an account name") }
            let store = try ServerData.openStore(arguments, creating: false)
            let tokens: [TokenSummary]
            do {
                tokens = try ServerData.blockingAwait {
                    defer { Task { await store.close() } }
                    return try await AccountManager(store: store).tokens(name: name)
                }
            } catch ServerStoreError.noSuchAccount(let missing) {
                throw CommandError.failed("there is no account named '\(missing)'")
            }
            let formatter = ISO8601DateFormatter()
            console.out("TOKEN ID                  CREATED               LAST USED             STATUS")
            for token in tokens {
                console.out(
                    token.tokenID.padding(toLength: 24, withPad: " ", startingAt: 0) + "  "
                        + formatter.string(from: token.createdAt) + "  "
                        + (token.lastUsedAt.map { formatter.string(from: $0) } ?? "never".padding(
                            toLength: 20, withPad: " ", startingAt: 0)) + "  " + (token.revoked ? "revoked" : "active"))
            }
            return 0
        case "add", "revoke":
            guard let name else { throw CommandError.usage("account \(action) needs an account name") }
            let store = try ServerData.openStore(arguments, creating: action == "add")
            let manager = AccountManager(store: store)
            if action == "add" {
                let added = try ServerData.blockingAwait {
                    defer { Task { await store.close() } }
                    return try await manager.add(name: name)
                }
                console.error(
                    added.created
                        ? "Made account '\(name)'. Its token (shown only now; keep it secret):"
                        : "Account '\(name)' exists; added a token (shown only now; keep it secret):")
                console.out(added.token.text)
            } else if let tokenID = arguments.option("--token") {
                let bare = AccessToken(text: tokenID)?.id ?? tokenID
                do {
                    try ServerData.blockingAwait {
                        defer { Task { await store.close() } }
                        try await manager.revoke(name: name, tokenID: bare)
                    }
                } catch ServerStoreError.noSuchAccount(let missing) {
                    throw CommandError.failed("there is no account named '\(missing)'")
                } catch ServerStoreError.noSuchToken {
                    throw CommandError.failed(
                        "account '\(name)' has no token \(bare); 'notesfs account tokens \(name)' lists its tokens")
                }
                console.out("Revoked token \(bare) of '\(name)'. Its other tokens keep working.")
            } else {
                do {
                    try ServerData.blockingAwait {
                        defer { Task { await store.close() } }
                        try await manager.revoke(name: name)
                    }
                } catch ServerStoreError.noSuchAccount(let missing) {
                    throw CommandError.failed("there is no account named '\(missing)'")
                }
                console.out("Revoked every token of '\(name)'. Its notes are kept; 'account add \(name)' reopens it.")
            }
            return 0
        case "list":
            guard name == nil else { throw CommandError.usage("account list takes no name") }
            let store = try ServerData.openStore(arguments, creating: false)
            let accounts = try ServerData.blockingAwait {
                defer { Task { await store.close() } }
                return try await AccountManager(store: store).list()
            }
            if accounts.isEmpty {
                console.out("No accounts. Add one with 'notesfs account add <name>'.")
                return 0
            }
            let width = max(4, accounts.map { $0.name.count }.max() ?? 4)
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withFullDate]
            console.out(
                "NAME".padding(toLength: width, withPad: " ", startingAt: 0) + "  TOKENS  ENTITIES  VERSION  CREATED     STATUS")
            for account in accounts {
                console.out(
                    account.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                        + pad(account.liveTokens, 6) + "  " + pad(account.liveEntities, 8) + "  "
                        + pad(Int(account.counter), 7) + "  " + formatter.string(from: account.createdAt) + "  "
                        + (account.revoked ? "revoked" : "active"))
            }
            return 0
        default:
            throw CommandError.usage("unknown action '\(action)'; use add, list, tokens or revoke")
        }
    }

    private static func pad(_ number: Int, _ width: Int) -> String {
        let text = String(number)
        return String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
