from backalley.batch import main

main()
