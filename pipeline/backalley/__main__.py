from backalley.cli.batch import main

main()
