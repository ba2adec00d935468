"""torch_like_train.py, the training loop the Python tests record, and the lines it marks."""

from pathlib import Path

SCRIPT = Path(__file__).with_name("torch_like_train.py").resolve()


def planted_line(tag: str) -> int:
    """The line of torch_like_train.py that carries `# PLANT: tag`."""
    for number, text in enumerate(SCRIPT.read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# PLANT: {tag}"):
            return number
    raise AssertionError(f"no '# PLANT: {tag}' in {SCRIPT}")
