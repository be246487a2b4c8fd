"""The extension hcomm._hcomm for `pip install` (pyproject.toml has the metadata): compiled
from src/ against libhcomm.so, found in HCOMM_BUILD_DIR (default ../build; the public headers
from HCOMM_SOURCE_DIR, default ..) or through pkg-config (an installed hcomm). The library's
directory goes into the extension's rpath."""

import os
import shlex
import subprocess

import pybind11
from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
repo = os.environ.get("HCOMM_SOURCE_DIR", os.path.dirname(here))


def hcomm_flags():
    build = os.path.abspath(os.environ.get("HCOMM_BUILD_DIR", os.path.join(repo, "build")))
    if os.path.exists(os.path.join(build, "libhcomm.so")):
        return ([os.path.join(repo, "include"), os.path.join(build, "include")], [build], [])
    try:
        cflags = subprocess.check_output(["pkg-config", "--cflags", "hcomm"], text=True)
        libs = subprocess.check_output(["pkg-config", "--libs-only-L", "hcomm"], text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"hcomm: libhcomm.so not found in {build} (HCOMM_BUILD_DIR) nor through "
                         f"pkg-config hcomm ({e}): build or install hcomm first") from e
    incs = [f[2:] for f in shlex.split(cflags) if f.startswith("-I")]
    dirs = [f[2:] for f in shlex.split(libs) if f.startswith("-L")]
    return incs, dirs, []


includes, lib_dirs, _ = hcomm_flags()
extension = Extension(
    "hcomm._hcomm",
    sources=sorted(os.path.join("src", f) for f in os.listdir(os.path.join(here, "src"))
                   if f.endswith(".cpp")),
    include_dirs=[pybind11.get_include()] + includes,
    library_dirs=lib_dirs,
    libraries=["hcomm"],
    runtime_library_dirs=lib_dirs,
    extra_compile_args=["-std=c++17", "-fvisibility=hidden", "-O2"],
    language="c++",
)

# The extension's sources compile side by side, one per core.
setup(ext_modules=[extension], options={"build_ext": {"parallel": os.cpu_count() or 1}})
