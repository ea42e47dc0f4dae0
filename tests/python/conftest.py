"""Fixtures of the Python package's tests: the OpenCL device (skipped cleanly when there is
none, unless PIOLA_REQUIRE_OPENCL=1), the backends to run on, and C programs built against the
installed package's own libpiola."""
import glob
import os
import shutil
import subprocess

import pytest

import piola

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))


def _opencl_reason():
    """None when an OpenCL world can be made, else why not."""
    try:
        if not piola.devices():
            return "no OpenCL device"
        with piola.World(backend="opencl"):
            pass
    except piola.Error as e:
        return "no usable OpenCL device (%s: %s)" % (e.status, e)
    return None


_OPENCL = _opencl_reason()


@pytest.fixture(scope="session")
def opencl():
    if _OPENCL is not None:
        if os.environ.get("PIOLA_REQUIRE_OPENCL") == "1":
            pytest.fail("PIOLA_REQUIRE_OPENCL=1 but " + _OPENCL)
        pytest.skip(_OPENCL)
    return "opencl"


@pytest.fixture(params=["cpu", "opencl"])
def backend(request):
    if request.param == "opencl":
        request.getfixturevalue("opencl")
    return request.param


def library_path():
    """The libpiola the installed package runs (python/CMakeLists.txt installs it beside the
    module)."""
    found = sorted(glob.glob(os.path.join(os.path.dirname(piola.__file__), "libpiola.so*")))
    if not found:
        pytest.fail("no libpiola.so* beside %s" % piola.__file__)
    return found[0]


@pytest.fixture(scope="session")
def build_c(tmp_path_factory):
    """build_c("file.c") -> path of a program built from tests/python/file.c against the
    package's libpiola and the repository's public headers (-Wall -Wextra -pedantic -Werror)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the reference program")
    out_dir = tmp_path_factory.mktemp("c")
    built = {}

    def build(name):
        if name not in built:
            lib = library_path()
            exe = str(out_dir / os.path.splitext(name)[0])
            cmd = [cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-pedantic", "-Werror",
                   "-DPIOLA_SHARED", "-I", os.path.join(REPO, "include"),
                   os.path.join(HERE, name), "-o", exe, lib,
                   "-Wl,-rpath," + os.path.dirname(lib)]
            subprocess.run(cmd, check=True)
            built[name] = exe
        return built[name]

    return build
