"""What the connector suite runners share: a package's source distribution from
PyPI (where its tests are), a directory whose `tarantool` is oncebox, the verdict."""
import os
import subprocess
import tarfile


def extract_sdist(python, package, version, work, subdir=""):
    """Downloads `package==version`'s sdist into `work` and extracts it (only
    `subdir` of it, when given); returns the extracted top directory."""
    subprocess.run([python, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                    f"{package}=={version}", "-d", work], check=True)
    top = f"{package}-{version}"
    with tarfile.open(os.path.join(work, f"{top}.tar.gz")) as tar:
        wanted = f"{top}/{subdir}".rstrip("/")
        members = [m for m in tar.getmembers() if m.name == wanted or m.name.startswith(wanted + "/")]
        tar.extractall(work, members=members, filter="data")
    return os.path.join(work, top)


def oncebox_as_tarantool(oncebox, work):
    """A new directory under `work` holding a `tarantool` symlink to `oncebox`."""
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir)
    os.symlink(os.path.abspath(oncebox), os.path.join(bindir, "tarantool"))
    return bindir


def enough_passed(suite, passed, min_pass):
    """Prints the verdict on a suite's pass count; the exit status (1 below `min_pass`)."""
    if passed < min_pass:
        print(f"FAILED: {passed} passed, below the minimum {min_pass}")
        return 1
    print(f"{suite} suite: {passed} tests pass, at least {min_pass} required: ok")
    return 0
