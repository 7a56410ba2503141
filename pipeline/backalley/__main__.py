from backalley.cli import app

app(prog_name="backalley")
