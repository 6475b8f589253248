from mailbridge.cli.main import main

main()
