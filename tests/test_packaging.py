"""What pyproject.toml promises about versions is what the suite runs on."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _floors_in_pyproject():
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        text = f.read()
    deps = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    return {m.group(1).lower(): m.group(2) for m in re.finditer(r'"([A-Za-z0-9_.-]+)>=([0-9.]+)', deps)}


def _pins_in_floor_file():
    with open(os.path.join(ROOT, "scripts", "floor-requirements.txt")) as f:
        return {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9_.-]+)==([0-9.]+)", f.read(), re.M)}


def test_floor_file_pins_exactly_the_pyproject_floors():
    floors, pins = _floors_in_pyproject(), _pins_in_floor_file()
    for pkg in ("numpy", "h5py", "tqdm"):
        assert pkg in floors and pkg in pins, pkg
        # the pin is the floor's oldest release line (e.g. floor 1.26 -> 1.26.x)
        assert pins[pkg].startswith(floors[pkg]), (pkg, floors[pkg], pins[pkg])
