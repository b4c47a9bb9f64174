"""The `taskbench` command line: thin typer commands, one public function call each."""
