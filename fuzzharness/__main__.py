import sys

from fuzzharness.cli import main

sys.exit(main())
