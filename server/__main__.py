from difill.server.cli import main

raise SystemExit(main())
