def mean(values):
    total = <|hole|>
    return total / len(<|hole|>)


class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.<|hole|>(item)
