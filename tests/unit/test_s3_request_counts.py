from kafkaspark_devstack.s3 import parse_request_counts

METRICS = """\
# HELP SeaweedFS_s3_request_seconds Bucketed histogram of s3 request processing time.
SeaweedFS_s3_request_seconds_bucket{bucket="b",type="GET",le="0.0001"} 0
SeaweedFS_s3_request_seconds_sum{bucket="b",type="GET"} 0.002
SeaweedFS_s3_request_seconds_count{bucket="b",type="GET"} 6
SeaweedFS_s3_request_seconds_count{bucket="c",type="GET"} 4
SeaweedFS_s3_request_seconds_count{bucket="",type="LIST"} 2
SeaweedFS_s3_request_seconds_count{bucket="b",type="PUT"} 1.5e1
SeaweedFS_s3_in_flight_requests{type="GET"} 3
"""


def test_requests_are_counted_by_type_over_every_bucket() -> None:
    assert parse_request_counts(METRICS) == {"GET": 10.0, "LIST": 2.0, "PUT": 15.0}
    assert parse_request_counts("") == {}
