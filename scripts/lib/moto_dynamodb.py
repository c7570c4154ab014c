"""A DynamoDB endpoint with transactions, for the tests that need TransactWriteItems.

dynalite (the main DynamoDB emulator of the test suite) has no TransactWriteItems and ignores
ReturnValuesOnConditionCheckFailure; moto's server has both. It runs single-threaded on purpose:
moto's threaded server restores a copy of the whole table when a transaction fails, which undoes
writes made concurrently by other requests.

    python3 scripts/lib/moto_dynamodb.py PORT
"""

import sys

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple


def main() -> None:
    port = int(sys.argv[1])
    app = DomainDispatcherApplication(create_backend_app)
    run_simple("127.0.0.1", port, app, threaded=False, use_reloader=False)


if __name__ == "__main__":
    main()
