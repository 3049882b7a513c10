#!/usr/bin/env bash
# Entrypoint of docker/Dockerfile and docker/Dockerfile.jetson: sources ROS 2 and the
# orbsift workspace, then runs the command (`docker run IMAGE ros2 launch orbsift ...`).
set -e
# ROS from apt lives in /opt/ros/$ROS_DISTRO; the Jetson base image builds it into .../install.
for setup in "/opt/ros/$ROS_DISTRO/setup.bash" "/opt/ros/$ROS_DISTRO/install/setup.bash"; do
    if [ -f "$setup" ]; then
        # shellcheck source=/dev/null
        source "$setup"
        break
    fi
done
# shellcheck source=/dev/null
source /opt/orbsift_ws/install/setup.bash
exec "$@"
