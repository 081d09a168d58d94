"""`python -m linrec …` is the `linrec` command."""

import sys

from linrec.app.cli import main

sys.exit(main())
