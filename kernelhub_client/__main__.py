import sys

from kernelhub_client.cli import main

sys.exit(main())
