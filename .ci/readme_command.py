"""Print command N of the README's "Two commands" section: the line after the comment "# N." in its bash block.

CI runs exactly what a new user copies, so the README and CI cannot drift; a README without it fails CI."""

import re
import sys
from pathlib import Path

readme, number = Path(sys.argv[1]).read_text(), sys.argv[2]
section = re.search(r"^## Two commands\n(.*?)^## ", readme, flags=re.S | re.M)
block = re.search(r"^```bash\n(.*?)^```", section.group(1), flags=re.S | re.M) if section else None
lines = block.group(1).splitlines() if block else []
found = [lines[i + 1] for i, line in enumerate(lines[:-1]) if line.startswith(f"# {number}.")]
if len(found) != 1 or not found[0].strip() or found[0].lstrip().startswith("#"):
    sys.exit(f"{sys.argv[1]}: no command {number} (the line after '# {number}.' in the first bash block of "
             "'## Two commands')")
print(found[0].strip())
