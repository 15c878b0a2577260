"""What the commands share: option types and option groups (``options``; ``prepare_options`` for the import
formats), the progress display (``progress``) and the import summary (``prepare_report``). A command module imports
these, never another command's module."""
