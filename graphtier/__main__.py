"""``python -m graphtier`` runs the command line."""

from graphtier.cli import main

if __name__ == "__main__":
    main()
