#!/usr/bin/env node
import { App } from "aws-cdk-lib";
import { ConsumerAppStack } from "../lib/consumerAppStack.js";

const app = new App();
new ConsumerAppStack(app, "ConsumerApp");
