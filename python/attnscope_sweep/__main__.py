import sys

from attnscope_sweep import main

sys.exit(main())
