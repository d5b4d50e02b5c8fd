"""The line a test file declares to join the unit tier (tests/conftest.py, docs/testing.md)."""

UNIT_MARK = "pytestmark = pytest.mark.unit"
