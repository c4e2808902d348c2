from purra_jupyter.demo.transports import main

raise SystemExit(main())
