import Foundation
import NotesModel
import PostgresKit
import SyncServer

/// Device names (docs/server.md "Device names"): the latest name each device
/// told the server, per account, shown with the history's versions.
extension PostgresServerStore {
    public func recordDeviceName(account: AccountID, device: DeviceID, name: String, at date: Date) async throws {
        try await run { connection in
            _ = try connection.execute(
                """
                INSERT INTO devices(account_id, device, name, named_at) VALUES ($1, $2::uuid, $3, $4)
                ON CONFLICT (account_id, device) DO UPDATE SET name = excluded.name, named_at = excluded.named_at
                WHERE devices.name IS DISTINCT FROM excluded.name
                """, account.rawValue, device.uuid, name, Self.milliseconds(date))
        }
    }

    public func deviceNames(account: AccountID, devices: Set<DeviceID>) async throws -> [DeviceID: String] {
        guard !devices.isEmpty else { return [:] }
        let ids = devices.map(\.uuid)
        return try await run { connection in
            let rows = try connection.execute(
                "SELECT device, name FROM devices WHERE account_id = $1 AND device = ANY($2::uuid[])",
                account.rawValue, PostgresValue.array(.uuid(ids)))
            var names: [DeviceID: String] = [:]
            for row in 0..<rows.rowCount {
                names[DeviceID(try rows.uuid(row, 0))] = try rows.string(row, 1)
            }
            return names
        }
    }
}
