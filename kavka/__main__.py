import sys

from kavka.cli import main

sys.exit(main())
