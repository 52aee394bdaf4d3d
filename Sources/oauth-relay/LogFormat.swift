import ArgumentParser
import Logging

enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    case json, text
}

enum LogLevelOption: String, ExpressibleByArgument, CaseIterable {
    case trace, debug, info, notice, warning, error, critical

    var level: Logger.Level { Logger.Level(rawValue: rawValue)! }
}
