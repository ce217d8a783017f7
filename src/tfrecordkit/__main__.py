"""``python -m tfrecordkit`` runs the command line."""

import sys

from tfrecordkit.cli import main

sys.exit(main())
