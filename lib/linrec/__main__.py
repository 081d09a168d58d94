"""`python -m linrec …` is the `linrec` command."""

import sys

from linrec.cli import main

sys.exit(main())
