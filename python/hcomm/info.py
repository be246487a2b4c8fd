"""python3 -m hcomm.info [ARGS]: what hcomm-info prints (this host, and under a launcher every
rank's transports and algorithms), by running the hcomm-info installed with this package."""

import os
import shutil
import sys


def find_hcomm_info():
    """HCOMM_INFO, else hcomm-info beside this package's library (an install prefix's bin/ or a
    build tree's tools/), else on PATH."""
    explicit = os.environ.get("HCOMM_INFO")
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    for up in range(1, 6):
        base = os.path.abspath(os.path.join(here, *([".."] * up)))
        for rel in ("bin/hcomm-info", "tools/hcomm-info"):
            path = os.path.join(base, rel)
            if os.access(path, os.X_OK):
                return path
    return shutil.which("hcomm-info")


def main(argv=None):
    path = find_hcomm_info()
    if path is None:
        sys.stderr.write("hcomm.info: hcomm-info not found (install hcomm, put it on PATH, or set "
                         "HCOMM_INFO)\n")
        return 2
    args = [path] + list(sys.argv[1:] if argv is None else argv)
    sys.stdout.flush()
    os.execv(path, args)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
