import os


def list_python_files(root):
    """Every .py file under root, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            if name.endswith(".py"):
                found.append(os.path.join(dirpath, name))
    return sorted(found)


def count_lines(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


if __name__ == "__main__":
    for path in list_python_files("."):
        print(path, 
