package moto_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines/internal/moto"
)

func TestMain(m *testing.M) { moto.Main(m) }

// TestTheMachinesSettingsAreNotRead: the environment's region, credentials and
// endpoint, which the SDK's usual loading would take, change nothing.
func TestTheMachinesSettingsAreNotRead(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_REGION": "eu-north-9", "AWS_ACCESS_KEY_ID": "AKIAMACHINE", "AWS_SECRET_ACCESS_KEY": "machine",
		"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:1",
		"HTTP_PROXY": "http://127.0.0.1:1", "AWS_PROFILE": "nobody", "AWS_CONFIG_FILE": "/nonexistent",
	} {
		t.Setenv(k, v)
	}
	cfg := moto.Config(t)
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if cfg.Region != moto.Region || err != nil || creds.AccessKeyID != moto.AccessKey {
		t.Errorf("region %q, credentials %q, %v; want %q, %q", cfg.Region, creds.AccessKeyID, err, moto.Region, moto.AccessKey)
	}
	if _, err := dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Errorf("ListTables: %v", err)
	}
}

func TestTableNamesAreUnique(t *testing.T) {
	a, b := moto.TableName(t, "x"), moto.TableName(t, "x")
	if a == b || len(a) < 3 {
		t.Errorf("names %q and %q", a, b)
	}
}
