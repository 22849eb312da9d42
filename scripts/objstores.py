#!/usr/bin/env python3
"""Makes buckets and containers on the loopback object-store test servers.

Run it with the Python of the virtualenv that scripts/objstores.sh makes:
  target/objstores-venv/bin/python scripts/objstores.py mkbucket --endpoint http://127.0.0.1:PORT NAME
  target/objstores-venv/bin/python scripts/objstores.py mkcontainer --endpoint http://127.0.0.1:PORT NAME

mkbucket makes an S3 bucket on moto's server (dummy credentials, region
us-east-1); mkcontainer makes a blob container on Azurite, as its fixed
development account devstoreaccount1. Both are idempotent: a bucket or
container that is already there is fine. Exit code 0 on success, 1 on any
other error (printed on stderr).
"""
import argparse
import sys

# Azurite's one built-in account and its published development key: not a
# secret, it is the same on every Azurite.
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

# moto accepts any credentials; these keep boto3 from looking for real ones.
S3_KEY_ID = "testing"
S3_SECRET = "testing"
S3_REGION = "us-east-1"


def mkbucket(endpoint, name):
    import boto3
    from botocore.exceptions import ClientError

    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=S3_KEY_ID,
        aws_secret_access_key=S3_SECRET,
        region_name=S3_REGION,
    )
    try:
        # us-east-1 takes no LocationConstraint.
        s3.create_bucket(Bucket=name)
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
            raise


def azurite_connection_string(endpoint):
    return (
        "DefaultEndpointsProtocol=http;"
        f"AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
        f"BlobEndpoint={endpoint.rstrip('/')}/{AZURITE_ACCOUNT};"
    )


def mkcontainer(endpoint, name):
    from azure.core.exceptions import ResourceExistsError
    from azure.storage.blob import BlobServiceClient

    service = BlobServiceClient.from_connection_string(azurite_connection_string(endpoint))
    try:
        service.create_container(name)
    except ResourceExistsError:
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd, what in (("mkbucket", "an S3 bucket on moto's server"), ("mkcontainer", "a blob container on Azurite")):
        p = sub.add_parser(cmd, help=f"make {what} (idempotent)")
        p.add_argument("--endpoint", required=True, help="the server's URL, e.g. http://127.0.0.1:PORT")
        p.add_argument("name")
    args = parser.parse_args(argv)
    try:
        (mkbucket if args.command == "mkbucket" else mkcontainer)(args.endpoint, args.name)
    except Exception as e:
        print(f"objstores: {args.command} {args.name} at {args.endpoint}: {e}", file=sys.stderr)
        return 1
    print(f"objstores: {args.command} {args.name}: ready", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
