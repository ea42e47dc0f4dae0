"""Generates the C source of Piola's cffi binding (API mode) from the public header.

Run by python/CMakeLists.txt at build time:

    python build_ffi.py --cc CC --include DIR --out _piola.c

The declarations come from include/piola/piola.h itself: the C preprocessor expands it (the
standard headers replaced by empty ones, since cffi knows int32_t, bool and size_t), every
named struct gets a trailing `...;` so that the compiler, not this script, decides its layout,
and the header's numeric #defines become cffi constants. Nothing is copied by hand, so the
binding follows the header when it changes. The output is compiled by CMake and linked
against libpiola.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import cffi

# Helpers written in C for the binding (python/piola_py.h): a step loop that runs n steps in
# one call, and the callbacks Python provides for the logger and the misuse hook.
EXTRA_CDEF = """
piola_status piola_py_step_n(piola_world *world, int32_t n, int32_t *done);
extern "Python" void piola_py_log(piola_log_level, const char *, void *);
extern "Python" void piola_py_assert(const char *, const char *, int, void *);
"""


def preprocess(cc, include_dir):
    """The public header after the preprocessor, without the standard headers' contents."""
    with tempfile.TemporaryDirectory() as fake:
        for name in ("stddef.h", "stdint.h", "stdbool.h"):
            with open(os.path.join(fake, name), "w") as f:
                f.write("/* empty: cffi knows these types */\n")
        cmd = cc + ["-E", "-P", "-undef", "-nostdinc", "-I", fake, "-I", include_dir,
                    os.path.join(include_dir, "piola", "piola.h")]
        return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout


def _struct_bodies(text, pattern):
    """(match, body, end) for each struct definition that `pattern` finds (braces matched)."""
    i = 0
    while True:
        m = pattern.search(text, i)
        if m is None:
            return
        depth, j = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        yield m, text[m.end():j - 1], j
        i = j


def partial_structs(text):
    """Adds `...;` before the closing brace of every named top-level struct definition, so that
    the compiler lays the struct out (cffi then needs only the fields the header names).

    cffi cannot make an anonymous struct partial, and a struct holding a partial struct is
    partial: so a struct that holds an anonymous struct (piola_collider_def's shape), and the
    structs that an anonymous struct holds (the shapes), keep their full declarations. For
    those cffi checks every field's offset and the struct's size against the compiler's when
    the module is built, so they cannot drift either."""
    anonymous = " ".join(body for _, body, _ in
                         _struct_bodies(text, re.compile(r"\bstruct\s*\{")))
    out, i = [], 0
    for m, body, j in _struct_bodies(text, re.compile(r"\bstruct\s+([A-Za-z_]\w*)\s*\{")):
        keep_full = "{" in body or re.search(r"\b%s\b" % m.group(1), anonymous)
        out.append(text[i:j] if keep_full else text[i:j - 1] + " ...; }")
        i = j
    out.append(text[i:])
    return "".join(out)


def constants(include_dir):
    """The headers' numeric #defines as cffi declarations (integers as `...`, others double)."""
    lines = []
    folder = os.path.join(include_dir, "piola")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".h"):
            continue
        with open(os.path.join(folder, name)) as f:
            for line in f:
                m = re.match(r"#define\s+(PIOLA_\w+)\s+([-+0-9.eE]+)\s*(/\*.*)?$", line)
                if m is None:
                    continue
                if re.fullmatch(r"[-+]?\d+", m.group(2)):
                    lines.append("#define %s ..." % m.group(1))
                else:
                    lines.append("static const double %s;" % m.group(1))
    return "\n".join(lines)


def make_ffi(cc, include_dir, helper_header):
    ffi = cffi.FFI()
    cdef = partial_structs(preprocess(cc, include_dir)) + "\n" + constants(include_dir)
    ffi.cdef(cdef + EXTRA_CDEF)
    with open(helper_header) as f:
        helpers = f.read()
    ffi.set_source("piola._piola", "#include <piola/piola.h>\n" + helpers)
    return ffi, cdef


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cc", required=True, help="the C compiler (its preprocessor is used)")
    p.add_argument("--include", required=True, help="the folder holding piola/piola.h")
    p.add_argument("--helpers", required=True, help="python/piola_py.h")
    p.add_argument("--out", required=True, help="the C file to write")
    p.add_argument("--cdef-out", help="also write the cdef given to cffi (for reading)")
    a = p.parse_args(argv)
    ffi, cdef = make_ffi(a.cc.split(";"), a.include, a.helpers)
    ffi.emit_c_code(a.out)
    if a.cdef_out:
        with open(a.cdef_out, "w") as f:
            f.write(cdef)
    return 0


if __name__ == "__main__":
    sys.exit(main())
