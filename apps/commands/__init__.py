"""One module per `accord` subcommand (module name = command name, '_' for '-')."""
