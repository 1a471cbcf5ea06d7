import sys

from deepsharp.cli import main

sys.exit(main())
