"""Selection edits (rewrite, fill holes, complete block): one feature.

selection.py says what the model is asked and how its answer becomes the new selection, service.py
runs it (versions, drafts), diff.py turns old and new text into the smallest TextEdits, and
code_actions.py and commands.py are the two ways an editor asks for one.
"""
