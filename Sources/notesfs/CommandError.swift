/// Why a command stopped. The message is shown to the user as it is, so it says
/// what happened and what to do.
enum CommandError: Error, CustomStringConvertible {
    /// Bad flags or arguments: exit code 2.
    case usage(String)
    /// The command ran and failed: exit code 1.
    case failed(String)

    var description: String {
        switch self {
        case .usage(let message), .failed(let message): message
        }
    }

    var exitCode: Int32 {
        switch self {
        case .usage: 2
        case .failed: 1
        }
    }
}
