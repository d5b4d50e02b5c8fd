import os


def count_lines(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


def report(paths):
    """Each path and its number of lines."""
    for path in paths:
        print(path, count_lines(path))


def python_files(root):
    """Every .py file under root, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            if name.endswith(".py"):
                found.append(os.path.join(dirpath, name))
    return sorted(found)


if __name__ == "__main__":
    report(python_files("."))
    for path in python_files("."):
        print(path, 
