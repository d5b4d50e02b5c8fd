from difill.cli import main

raise SystemExit(main())
