/// What a subcommand accepts: options that take a value and flags that do not.
struct ArgumentSpec {
    var options: Set<String> = []
    var flags: Set<String> = []
    /// How many positional arguments are allowed.
    var positional: ClosedRange<Int> = 0...0
    /// The words the first positional argument may be (`account add|list|…`);
    /// shell completion offers them.
    var actions: [String] = []
    /// Options and flags for notesfs's own use (`--ready-fd`): accepted, but
    /// neither documented nor completed.
    var hidden: Set<String> = []

    /// The options and flags a person may type, in a stable order.
    var publicOptions: [String] { options.subtracting(hidden).sorted() }
    var publicFlags: [String] { flags.subtracting(hidden).sorted() }
}

/// A subcommand's arguments after parsing against its `ArgumentSpec`.
struct ParsedArguments {
    var positional: [String] = []
    var options: [String: String] = [:]
    var flags: Set<String> = []

    func option(_ name: String) -> String? { options[name] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// Parses `arguments`; `--name value` and `--name=value` are both accepted.
    init(_ arguments: [String], spec: ArgumentSpec) throws(CommandError) {
        var index = 0
        var onlyPositional = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositional || !argument.hasPrefix("-") || argument == "-" {
                positional.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositional = true
                continue
            }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            if spec.flags.contains(name) {
                guard inlineValue == nil else { throw .usage("\(name) takes no value") }
                flags.insert(name)
            } else if spec.options.contains(name) {
                if let inlineValue {
                    options[name] = inlineValue
                } else {
                    guard index < arguments.count else { throw .usage("\(name) needs a value") }
                    options[name] = arguments[index]
                    index += 1
                }
            } else {
                throw .usage("unknown option \(name)")
            }
        }
        guard spec.positional.contains(positional.count) else {
            if positional.count < spec.positional.lowerBound {
                throw .usage("missing argument")
            }
            throw .usage("unexpected argument '\(positional[spec.positional.upperBound])'")
        }
    }

    /// An integer option, or `defaultValue` when absent.
    func integer(_ name: String, default defaultValue: Int) throws(CommandError) -> Int {
        guard let text = options[name] else { return defaultValue }
        guard let value = Int(text) else { throw .usage("\(name) needs a whole number, not '\(text)'") }
        return value
    }
}
