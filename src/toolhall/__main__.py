from toolhall.cli import main

main()
