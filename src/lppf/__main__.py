from lppf.cli import run

run()
