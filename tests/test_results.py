"""Result files (copyjax.results): atomic writes, point files and their configuration hash."""
import os
from pathlib import Path

import numpy as np
import pytest

from copyjax import results as R


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = str(tmp_path / "a.json")
    R.write_json(path, {"x": 1})

    class Unserialisable:
        pass

    with pytest.raises(TypeError):
        R.write_json(path, {"x": Unserialisable()})
    assert R.read_json(path) == {"x": 1}
    assert sorted(os.listdir(tmp_path)) == ["a.json"]  # the temporary file was removed


def test_point_files_are_reused_only_for_the_same_configuration_and_P(tmp_path):
    os.makedirs(tmp_path / "points")
    base = R.point_path(str(tmp_path), "softmax", 3)
    assert base.endswith(os.path.join("points", "softmax_003"))
    cfg = {"L": 4, "V": 3, "seed": 0}
    h = R.config_hash(cfg)
    assert h == R.config_hash(dict(reversed(list(cfg.items()))))  # key order does not matter
    key = lambda c, P: {"config_hash": R.config_hash(c), "P": P}  # what the main job keys a point by
    assert R.load_point(base, key(cfg, 20)) is None  # nothing saved yet
    R.save_point(base, key(cfg, 20), {"P": 20, "v": np.float64(0.5)}, {"a": np.arange(3)})
    summary, arrays = R.load_point(base, key(cfg, 20))
    assert summary["v"] == 0.5 and arrays["a"].tolist() == [0, 1, 2]
    assert R.load_point(base, key(cfg | {"seed": 1}, 20)) is None
    assert R.load_point(base, key(cfg, 40)) is None
    # a summary saved by hand without its key (or by an older copyjax) is not reused
    R.write_json(base + ".json", {"P": 20, "config_hash": h, "v": 0.5})
    assert R.load_point(base, key(cfg, 20)) is None
    # a point whose summary was never written (killed between the two writes) is not done
    os.unlink(base + ".json")
    assert R.load_point(base, key(cfg, 20)) is None


def test_csv_has_the_header_then_the_rows(tmp_path):
    path = str(tmp_path / "s.csv")
    R.write_csv(path, ("a", "b"), [[1, ""], [2.5, "x"]])
    assert Path(path).read_text().splitlines() == ["a,b", "1,", "2.5,x"]
