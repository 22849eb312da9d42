#!/usr/bin/env python3
"""Makes buckets and containers on the loopback object-store test servers.

Run it with the Python of the virtualenv that scripts/objstores.sh makes:
  target/objstores-venv/bin/python scripts/objstores.py mkbucket --endpoint http://127.0.0.1:PORT NAME
  target/objstores-venv/bin/python scripts/objstores.py mkcontainer --endpoint http://127.0.0.1:PORT NAME

  target/objstores-venv/bin/python scripts/objstores.py download --endpoint URL s3|az BUCKET PREFIX DEST
  target/objstores-venv/bin/python scripts/objstores.py rm --endpoint URL s3|az BUCKET KEY
  target/objstores-venv/bin/python scripts/objstores.py serve-s3 --port PORT

mkbucket makes an S3 bucket on moto's server (dummy credentials, region
us-east-1); mkcontainer makes a blob container on Azurite, as its fixed
development account devstoreaccount1. Both are idempotent: a bucket or
container that is already there is fine. download copies every object under
PREFIX into the folder DEST (keeping the paths below PREFIX), so the tests
read a crawl's output with the same code as a local one; rm deletes one
object. Exit code 0 on success, 1 on any other error (printed on stderr).

serve-s3 runs moto's S3 server on 127.0.0.1:PORT with its writes taken one
at a time. moto answers requests on threads and checks a conditional write
(If-None-Match: *, If-Match) and then makes it as two steps, so two drivers
that create the same lease at the same instant could both be told they
created it; S3 itself makes each conditional write atomically, which is
what the data store's lease relies on. Reads still run side by side.
"""
import os
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


def s3_client(endpoint):
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=S3_KEY_ID,
        aws_secret_access_key=S3_SECRET,
        region_name=S3_REGION,
    )


def az_container(endpoint, name):
    from azure.storage.blob import BlobServiceClient

    return BlobServiceClient.from_connection_string(azurite_connection_string(endpoint)).get_container_client(name)


def download(endpoint, kind, bucket, prefix, dest):
    prefix = prefix.strip("/") + "/"
    n = 0
    if kind == "s3":
        s3 = s3_client(endpoint)
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                path = os.path.join(dest, obj["Key"][len(prefix):])
                os.makedirs(os.path.dirname(path), exist_ok=True)
                s3.download_file(bucket, obj["Key"], path)
                n += 1
    else:
        container = az_container(endpoint, bucket)
        for blob in container.list_blobs(name_starts_with=prefix):
            path = os.path.join(dest, blob.name[len(prefix):])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(container.download_blob(blob.name).readall())
            n += 1
    print(f"objstores: downloaded {n} objects", file=sys.stderr)


def rm(endpoint, kind, bucket, key):
    if kind == "s3":
        s3_client(endpoint).delete_object(Bucket=bucket, Key=key)
    else:
        az_container(endpoint, bucket).delete_blob(key)


def serve_s3(port):
    import threading

    import moto.server

    writes = threading.Lock()
    run_simple = moto.server.run_simple

    def one_write_at_a_time(host, port, app, **kwargs):
        def serialized(environ, start_response):
            if environ.get("REQUEST_METHOD") in ("GET", "HEAD", "OPTIONS"):
                return app(environ, start_response)
            with writes:
                # The whole answer is made under the lock: the check and
                # the write of a conditional request happen inside it.
                answer = app(environ, start_response)
                try:
                    return list(answer)
                finally:
                    if hasattr(answer, "close"):
                        answer.close()

        return run_simple(host, port, serialized, **kwargs)

    moto.server.run_simple = one_write_at_a_time
    moto.server.main(["-H", "127.0.0.1", "-p", str(port)])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd, what in (("mkbucket", "an S3 bucket on moto's server"), ("mkcontainer", "a blob container on Azurite")):
        p = sub.add_parser(cmd, help=f"make {what} (idempotent)")
        p.add_argument("--endpoint", required=True, help="the server's URL, e.g. http://127.0.0.1:PORT")
        p.add_argument("name")
    p = sub.add_parser("download", help="copy every object under a prefix into a folder")
    p.add_argument("--endpoint", required=True)
    p.add_argument("kind", choices=["s3", "az"])
    p.add_argument("bucket")
    p.add_argument("prefix")
    p.add_argument("dest")
    p = sub.add_parser("rm", help="delete one object")
    p.add_argument("--endpoint", required=True)
    p.add_argument("kind", choices=["s3", "az"])
    p.add_argument("bucket")
    p.add_argument("key")
    p = sub.add_parser("serve-s3", help="run moto's S3 server on loopback, one write at a time")
    p.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    if args.command == "serve-s3":
        serve_s3(args.port)
        return 0
    try:
        if args.command == "download":
            download(args.endpoint, args.kind, args.bucket, args.prefix, args.dest)
        elif args.command == "rm":
            rm(args.endpoint, args.kind, args.bucket, args.key)
        else:
            (mkbucket if args.command == "mkbucket" else mkcontainer)(args.endpoint, args.name)
    except Exception as e:
        print(f"objstores: {args.command} at {args.endpoint}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
