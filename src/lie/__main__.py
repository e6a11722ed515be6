import sys

from lie.cli import main

sys.exit(main())
