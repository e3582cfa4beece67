package awsauth

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// RoleSessionName names assumed-role sessions so they are recognisable in CloudTrail.
const RoleSessionName = "inferscope-grafana-datasource"

// Deps are the seams to the AWS SDK; the zero value uses the real SDK.
type Deps struct {
	// LoadConfig loads shared configuration (env, files, IMDS); config.LoadDefaultConfig when nil.
	LoadConfig func(ctx context.Context, optFns ...func(*config.LoadOptions) error) (aws.Config, error)
	// NewSTSClient builds the client AssumeRole calls go through; sts.NewFromConfig when nil.
	NewSTSClient func(cfg aws.Config) stscreds.AssumeRoleAPIClient
	// EC2RoleProvider serves authType ec2_iam_role; ec2rolecreds.New() when nil.
	EC2RoleProvider aws.CredentialsProvider
}

var roleARN = regexp.MustCompile(`^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$`)

// NewCredentialsProvider returns a cached, self-refreshing provider for s,
// after checking it against Grafana's [aws] settings in ctx. Build it once
// per datasource instance so the cache is shared by its queries.
func NewCredentialsProvider(ctx context.Context, s Settings, d Deps) (aws.CredentialsProvider, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if err := GateFromContext(ctx).Check(s); err != nil {
		return nil, err
	}
	if d.LoadConfig == nil {
		d.LoadConfig = config.LoadDefaultConfig
	}
	if d.NewSTSClient == nil {
		d.NewSTSClient = func(cfg aws.Config) stscreds.AssumeRoleAPIClient { return sts.NewFromConfig(cfg) }
	}

	// base is the configuration the assume-role client reuses (HTTP client, retries, region).
	base := aws.Config{Region: s.Region}
	switch s.effectiveAuthType() {
	case AuthKeys:
		base.Credentials = credentials.NewStaticCredentialsProvider(s.AccessKey.Reveal(), s.SecretKey.Reveal(), s.SessionToken.Reveal())
	case AuthDefault, AuthCredentials:
		opts := []func(*config.LoadOptions) error{config.WithRegion(s.Region)}
		if s.effectiveAuthType() == AuthCredentials {
			profile := s.Profile
			if profile == "" {
				profile = "default"
			}
			opts = append(opts, config.WithSharedConfigProfile(profile))
		}
		cfg, err := d.LoadConfig(ctx, opts...)
		if err != nil {
			return nil, loadConfigError(s, err)
		}
		cfg.Region = s.Region
		base = cfg
	case AuthEC2IAMRole:
		p := d.EC2RoleProvider
		if p == nil {
			p = ec2rolecreds.New()
		}
		base.Credentials = p
	}

	provider := base.Credentials
	if s.AssumeRoleARN != "" {
		if s.Region == "" {
			return nil, settingErrorf([]Setting{SetRegion}, "assume role needs a region for STS; set %[1]s")
		}
		client := d.NewSTSClient(base)
		provider = stscreds.NewAssumeRoleProvider(client, s.AssumeRoleARN, func(o *stscreds.AssumeRoleOptions) {
			o.RoleSessionName = RoleSessionName
			if s.ExternalID != "" {
				o.ExternalID = aws.String(s.ExternalID)
			}
		})
	}
	if provider == nil {
		return nil, settingErrorf([]Setting{SetAuthType}, "no AWS credentials found for authentication type %[2]q; configure credentials "+
			"(environment, shared files, instance role) or choose another %[1]s", s.effectiveAuthType())
	}
	if _, cached := provider.(*aws.CredentialsCache); cached {
		return provider, nil
	}
	return aws.NewCredentialsCache(provider), nil
}

func loadConfigError(s Settings, err error) error {
	var missing config.SharedConfigProfileNotExistError
	if errors.As(err, &missing) {
		return settingErrorf([]Setting{SetProfile}, "AWS profile %[2]q was not found in the shared config/credentials files; "+
			"set %[1]s to an existing profile or add it to ~/.aws/credentials of the Grafana server", missing.Profile)
	}
	return backend.DownstreamError(fmt.Errorf("loading AWS configuration for authentication type %q: %w; "+
		"check the Grafana server's AWS environment and shared files", s.effectiveAuthType(), err))
}
