from apps.cli import entry

entry()
