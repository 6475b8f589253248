from mailbridge.cli.entry import main

main()
