"""Bad command-line input: exit status 2, no traceback, and an error line (argparse's
``prog: error: ...``, or the scripts' own ``error: ...``) that names the option. The usage block above it
lists every option, so asserting on the whole of stderr would pass whatever the message said."""


def error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ": error: " in ln or ln.startswith("error: ")]
    assert lines, f"no error line in: {stderr[-1000:]!r}"
    return lines[-1].split("error: ", 1)[1]


def assert_cli_error(r, *words) -> str:
    """``r``: a finished ``subprocess.run``. Returns the error message."""
    assert r.returncode == 2, (r.returncode, r.stderr[-1000:])
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    msg = error_line(r.stderr)
    for w in words:
        assert w in msg, (w, msg)
    return msg
