"""Pure text rules, shared by every path from a model's middle to what an editor shows.

context.py builds the text around a cursor (LF windows, shape, line endings decided once),
shape.py says how much a position asks for, filters.py and rules.py hold the rules, and
pipeline.py runs them: ``shown_texts``, ``shown_middles``, ``shown_rewrite``; budget.py is the
bound every scan of user input works within.  No torch, no LSP.
"""
