"""Reading sm_5x SASS listings (cuobjdump -sass), shared by
scripts/sass_quant_ipw.py and scripts/sass_ops_ipe.py."""
import re
import subprocess
import sys

INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s*\{?\s*(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;}]*)[;}]")
FUNC = re.compile(r"Function : (\S+)")


def sass_text(path, cuobjdump="cuobjdump"):
    """The SASS listing of an object file or executable (cuobjdump runs on
    it), or a saved listing read as it is."""
    if path.endswith((".o", ".obj", ".a", ".so", ".cubin")) or "." not in path.rsplit("/", 1)[-1]:
        out = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"cuobjdump failed on {path}: {out.stderr.strip()}")
        return out.stdout
    return open(path).read()


def functions(text):
    """(name, arch, [(addr, pred, op, args)]) per function of the listing."""
    cur, body, arch = None, [], None
    for line in text.splitlines():
        m = re.search(r"arch = (sm_\d+)", line)
        if m:
            arch = m.group(1)
        m = FUNC.search(line)
        if m:
            if cur:
                yield cur, arch, body
            cur, body = m.group(1), []
            continue
        m = INSN.search(line)
        if m and cur:
            body.append((int(m.group(1), 16), (m.group(2) or "").strip(), m.group(3), m.group(4)))
    if cur:
        yield cur, arch, body
