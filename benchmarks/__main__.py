"""`python -m benchmarks all|list [--device cpu|gpu] [--only a,b] [--out DIR]`: see benchmarks/run_all.py."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_all import main  # noqa: E402

sys.exit(main())
