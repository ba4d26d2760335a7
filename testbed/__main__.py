import sys

from .cli import main

# guarded: a process that multiprocessing spawns imports this module again, and must not run
# the command a second time
if __name__ == "__main__":
    sys.exit(main())
