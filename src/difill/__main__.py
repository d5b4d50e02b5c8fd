from difill.cli import run

run()
